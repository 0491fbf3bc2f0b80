// Each rank's task order per pipeline schedule (weft/Analysis/TaskOrder.h),
// P = 4, M = 8, as weft-test-print-task-orders prints them: rank 0 and the
// last rank, and the simulated bubble for T_F = T_B = T_W. The bubble and
// in-flight figures are held to the papers' formulas by TaskOrderTest;
// these lines pin the orders themselves.
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=gpipe ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=1f1b ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=interleaved ranks=4 microbatches=8 virtual-stages=2" -o /dev/null | FileCheck %s --check-prefix=INTER
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=zb-h1 ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=ZBH1
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=zb-h2 ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=ZBH2
// RUN: weft-opt %s --weft-test-print-task-orders="schedule=zb-v ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=ZBV
// RUN: not weft-opt %s --weft-test-print-task-orders="schedule=interleaved ranks=4 microbatches=6" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: not weft-opt %s --weft-test-print-task-orders="schedule=zb" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// GPIPE: gpipe P=4 M=8 rank 0 (stages 0): F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F0.7 B0.7 B0.6 B0.5 B0.4 B0.3 B0.2 B0.1 B0.0
// GPIPE: gpipe P=4 M=8 rank 3 (stages 3): F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F0.7 B0.7 B0.6 B0.5 B0.4 B0.3 B0.2 B0.1 B0.0
// GPIPE-NEXT: gpipe P=4 M=8 bubble 0.2727 rank-0 idle 9.00 T_F

// ONEF: 1f1b P=4 M=8 rank 0 (stages 0): F0.0 F0.1 F0.2 F0.3 B0.0 F0.4 B0.1 F0.5 B0.2 F0.6 B0.3 F0.7 B0.4 B0.5 B0.6 B0.7
// ONEF: 1f1b P=4 M=8 rank 3 (stages 3): F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 F0.4 B0.4 F0.5 B0.5 F0.6 B0.6 F0.7 B0.7
// ONEF-NEXT: 1f1b P=4 M=8 bubble 0.2727 rank-0 idle 9.00 T_F

// INTER: interleaved P=4 M=8 rank 0 (stages 0,4): F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 F0.5 F0.6 B1.0 F0.7 B1.1 F1.4 B1.2 F1.5 B1.3 F1.6 B0.0 F1.7 B0.1 B0.2 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7
// INTER: interleaved P=4 M=8 rank 3 (stages 3,7): F0.0 F0.1 F0.2 F0.3 F1.0 B1.0 F1.1 B1.1 F1.2 B1.2 F1.3 B1.3 F0.4 B0.0 F0.5 B0.1 F0.6 B0.2 F0.7 B0.3 F1.4 B1.4 F1.5 B1.5 F1.6 B1.6 F1.7 B1.7 B0.4 B0.5 B0.6 B0.7
// INTER-NEXT: interleaved P=4 M=8 bubble 0.1579 rank-0 idle 4.50 T_F

// ZBH1: zb-h1 P=4 M=8 rank 0 (stages 0): F0.0 F0.1 F0.2 F0.3 B0.0 W0.0 F0.4 B0.1 W0.1 F0.5 B0.2 W0.2 F0.6 B0.3 W0.3 F0.7 B0.4 W0.4 B0.5 W0.5 B0.6 W0.6 B0.7 W0.7
// ZBH1: zb-h1 P=4 M=8 rank 3 (stages 3): F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 W0.0 F0.4 B0.4 W0.1 F0.5 B0.5 W0.2 F0.6 B0.6 W0.3 F0.7 B0.7 W0.4 W0.5 W0.6 W0.7
// ZBH1-NEXT: zb-h1 P=4 M=8 bubble 0.1111 rank-0 idle 3.00 T_F

// ZBH2: zb-h2 P=4 M=8 rank 0 (stages 0): F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 B0.0 W0.0 F0.7 B0.1 W0.1 B0.2 W0.2 B0.3 W0.3 B0.4 W0.4 B0.5 W0.5 B0.6 W0.6 B0.7 W0.7
// ZBH2: zb-h2 P=4 M=8 rank 3 (stages 3): F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 F0.4 B0.4 F0.5 B0.5 F0.6 B0.6 W0.0 F0.7 B0.7 W0.1 W0.2 W0.3 W0.4 W0.5 W0.6 W0.7
// ZBH2-NEXT: zb-h2 P=4 M=8 bubble 0.1111 rank-0 idle 0.00 T_F

// ZBV: zb-v P=4 M=8 rank 0 (stages 0,7): F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F1.0 B1.0 W1.0 F1.1 B1.1 W1.1 F1.2 B1.2 W1.2 F1.3 B1.3 W1.3 F0.7 B0.0 W0.0 F1.4 B1.4 W1.4 B0.1 W0.1 F1.5 B1.5 W1.5 B0.2 W0.2 F1.6 B1.6 W1.6 B0.3 W0.3 F1.7 B1.7 W1.7 B0.4 W0.4 B0.5 W0.5 B0.6 W0.6 B0.7 W0.7
// ZBV: zb-v P=4 M=8 rank 3 (stages 3,4): F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F0.3 F1.3 B1.0 W1.0 F0.4 B0.0 W0.0 F1.4 B1.1 W1.1 F0.5 B0.1 W0.1 F1.5 B1.2 W1.2 F0.6 B0.2 W0.2 F1.6 B1.3 W1.3 F0.7 B0.3 W0.3 F1.7 B1.4 W1.4 B0.4 B1.5 B0.5 B1.6 B0.6 B1.7 B0.7 W0.4 W1.5 W1.6 W1.7 W0.5 W0.6 W0.7
// ZBV-NEXT: zb-v P=4 M=8 bubble 0.0588 rank-0 idle 0.00 T_F

// GROUPS: error: weft-test-print-task-orders: the interleaved schedule runs micro-batches in groups of the pipeline's 4 ranks: 6 micro-batches is not a multiple of 4
// UNKNOWN: error: weft-test-print-task-orders: unknown schedule 'zb'

module {}
