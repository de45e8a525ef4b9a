block.u 0 L2 [] -> {
      r20       = mov rZ                                          // delay=1
      r1        = s2r sr[0x21]                                    // delay=6 wr:2
} -> [1]
block 1 L4 [0, 8] -> {
      b1        = bclear                                          // delay=1
      b1        = bssy b1 pT L5                                   // delay=1
      p0        = isetp.ge.i32 r20 c[0x0][0x40]                   // delay=13
@!p0              bra L6                                          // delay=1
} -> [2, 3]
block 2 L7 [1] -> {
      r0        = mov 0x2                                         // delay=1
                  bra L5                                          // delay=1
} -> [6]
block 3 L6 [1] -> {
      r30       = mov r1                                          // delay=6
      ur6       = mov 0x0                                         // delay=1
} -> [4]
block 4 L10 [3, 4] -> {
      r24..28   = ld.global.a64.constant.b128 [r12..14]           // delay=4 rd:0 wr:1
      r31       = ld.global.a64.constant.b32 [r16..18]            // delay=1 wr:2
                  st.shared.strong.cta.b128 [r30] r24..28         // delay=4 rd:1
      r30       = iadd3 r30 0x100 rZ                              // delay=6
      p0        = isetp.lt.u32 r30 0x200                          // delay=13
@p0               bra L10                                         // delay=1
} -> [5, 4]
block 5 L11 [4] -> {
                  bar.sync                                        // delay=6 yld
                  nop                                             // delay=2
      r100..104 = ld.shared.strong.cta.b128 [r97]                 // delay=1 wr:0
      r104..106 = ld.shared.strong.cta.b64 [r98+0x2000]           // delay=1 wr:1
      r108..112 = ldsm.16.m8n8.x4 [r99]                           // delay=1 wr:2
      r40       = ld.local.b32 [r1+0x10]                          // delay=1 wr:3
      r52       = ffma.ftz r100 r104 r52                          // delay=1 wt=000001
      r53       = ffma.ftz r101 r104 r53                          // delay=1
      r54       = ffma.ftz r102 r105 r40                          // delay=1 wt=001000
      r55       = hfma2 r108 r109 r55                             // delay=1 wt=000100
                  st.local.b32 [r1+0x10] r54                      // delay=2 rd:0
      r20       = iadd3 r20 0x10 rZ                               // delay=6
      r0        = mov 0xffffffff                                  // delay=6
} -> [6]
block 6 L5 [2, 5] -> {
                  bsync b1 pT                                     // delay=1 yld
      p0        = isetp.lt.u32 r0 0x3                             // delay=13
@!p0              bra L12                                         // delay=1
} -> [7, 8]
block 7 L13 [6] -> {
      r2 p0     = iadd3 r3 c[0x1][0x20] rZ                        // delay=13
      r3        = iadd3.x rZ c[0x1][0x24] rZ p0 pF                // delay=6
                  st.global.a64.strong.sys.b128 [r2..4] r52..56   // delay=2 rd:0
                  exit                                            // delay=1
} -> []
block 8 L12 [6] -> {
                  bra L4                                          // delay=1
} -> [1]
