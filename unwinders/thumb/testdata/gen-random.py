#!/usr/bin/env python3
"""Write random.bin: a deterministic stream of random Thumb instructions for
the objdump oracle test (gen-objdump.sh disassembles it with
`objdump -D -b binary -m arm -M force-thumb`). Half the instructions are
32-bit (first halfword uniform in 0xE800-0xFFFF), half 16-bit (uniform in
0x0000-0xE7FF), so every encoding group is hit many times."""
import random, struct, sys

rng = random.Random(20261122)
out = bytearray()
for _ in range(30000):
    if rng.random() < 0.5:
        out += struct.pack('<HH', rng.randint(0xE800, 0xFFFF), rng.randint(0, 0xFFFF))
    else:
        out += struct.pack('<H', rng.randint(0, 0xE7FF))
open(sys.argv[1] if len(sys.argv) > 1 else 'random.bin', 'wb').write(out)
