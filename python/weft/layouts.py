"""weftc --auto-parallel's layouts: the short form its table prints
("P2 T1 D1 M8 zb-v none flash", tools/weftc/AutoParallel.cpp's
Layout::brief) turned back into the weftc flags that compile it."""

SCHEDULES = ("gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v")


def layout_flags(brief):
    """weftc's flags for `brief`. Raises ValueError for a word the table
    does not print."""
    words = brief.split()
    p, t, d, m = (int(w[1:]) for w in words[:4])
    flags = [f"--pipeline-parallel={p}", f"--tensor-parallel={t}",
             f"--data-parallel={d}", f"--microbatches={m}"]
    for word in words[4:]:
        if word.startswith("interleavedx"):
            flags += ["--schedule=interleaved",
                      f"--virtual-stages={word[len('interleavedx'):]}"]
        elif word in SCHEDULES:
            flags.append(f"--schedule={word}")
        elif word in ("none", "selective"):
            flags.append(f"--recompute={word}")
        elif word.startswith("full-"):
            flags += ["--recompute=full",
                      f"--recompute-granularity={word[len('full-'):]}"]
        elif word == "sp":
            flags.append("--sequence-parallel")
        elif word.startswith("zero"):
            flags.append(f"--zero-stage={word[len('zero'):]}")
        elif word == "flash":
            flags.append("--flash-attention")
        else:
            raise ValueError(f"layout {brief!r}: unknown word {word!r}")
    return flags


def layout_ranks(brief):
    """P x T x D of `brief`: the ranks its plan runs on."""
    p, t, d = (int(w[1:]) for w in brief.split()[:3])
    return p * t * d
