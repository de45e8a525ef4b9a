block 0 L0 [] -> {
      r10       = mov rZ                                          // delay=1
} -> [1]
block 1 L1 [0, 1] -> {
      r5        = ffma r6 r7 r5                                   // delay=1
      r8        = ffma r6 r7 r8                                   // delay=1
      r9        = ffma r6 r7 r9                                   // delay=1
      r11       = iadd3 r11 0x1 rZ                                // delay=6
      p0        = isetp.lt.u32 r11 c[0x0][0x44]                   // delay=13
@p0               bra L1                                          // delay=1
} -> [2, 1]
block 2 L2 [1, 2] -> {
      r40..44   = ldsm.16.m8n8.x4 [r30]                           // delay=1 wr:0
      r44..46   = ldsm.16.m8n8.x2 [r31+0x200]                     // delay=1 wr:1
      r4..8     = hmma.m16n8k16.f32 r40..44 r44..46 r4..8         // delay=2 wt=000011
      r12..16   = hmma.m16n8k16.f32 r40..44 r46..48 r12..16       // delay=2
      r10       = iadd3 r10 0x20 rZ                               // delay=6
      p0        = isetp.lt.u32 r10 c[0x0][0x40]                   // delay=13
@p0               bra L2                                          // delay=1
} -> [3, 2]
block 3 L3 [2] -> {
                  exit                                            // delay=1
} -> []
