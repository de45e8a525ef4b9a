Push constant ranges:
    RANGE0 (480B): Vulkan push constants and API params

mov(8)          g1<1>UD         0x00000000UD                    { align1 1Q };
mov(8)          g9<1>UD         g0.1<0,1,0>UD                   { align1 WE_all 1Q };

LABEL158:
cmp.ge.f0.0(8)  null<1>D        g1<8,8,1>D      g3.6<0,1,0>D    { align1 1Q I@2 };
(+f0.0) break(8) JIP:  LABEL156       UIP:  LABEL156            { align1 1Q };
mov(8)          g30<1>UD        g9<8,8,1>UD                     { align1 1Q };

LABEL147:
cmp.ge.f0.0(8)  null<1>UD       g30<8,8,1>UD    0x00000200UD    { align1 1Q I@1 };
(+f0.0) break(8) JIP:  LABEL148       UIP:  LABEL148            { align1 1Q };
send(8)         g24UD           g12UD           nullUD          0x04405500                0x00000000
                            ugm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, src1_len = 0 bti )  BTI 2  base_offset 0  { align1 1Q $1 };
send(8)         g31UD           g16UD           nullUD          0x04105500                0x00000000
                            ugm MsgDesc: ( load, a32, d32, V1, L1STATE_L3MOCS dst_len = 1, src0_len = 1, src1_len = 0 bti )  BTI 3  base_offset 0  { align1 1Q $2 };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N $1.dst };
send(8)         nullUD          g30UD           g24UD           0x04000504                0x00000100
                            slm MsgDesc: ( store, a32, d32, V4, L1STATE_L3MOCS dst_len = 0, src0_len = 1, src1_len = 4 flat )  base_offset 0  { align1 1Q $3 };
add(8)          g30<1>D         g30<1,1,0>D     256D            { align1 1Q compacted };

LABEL148:
while(8)        JIP:  LABEL147                                  { align1 1Q };
send(8)         nullUD          g32UD           nullUD          0x02000004                0x00000000
                            gateway MsgDesc: (barrier msg)  mlen 1 ex_mlen 0 rlen 0 { align1 WE_all 1Q $5 };
sync bar(8)                     null<0,1,0>UB                   { align1 WE_all 1Q };
send(8)         g100UD          g97UD           nullUD          0x04405500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, flat )  base_offset 0  { align1 1Q $6 };
send(8)         g104UD          g98UD           nullUD          0x04205500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V2, L1STATE_L3MOCS dst_len = 2, src0_len = 1, flat )  base_offset 0  { align1 1Q $7 };
mov(1)          g97<1>UD        0x00000480UD                    { align1 WE_all 1N $0.src };
and(1)          a0.2<1>UD       g0.5<0,1,0>UD   0xfffffc00UD    { align1 WE_all 1N };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@2 };
send(1)         g96UD           g97UD           nullUD          0x4210c500                a0.2<0>UD
                            ugm MsgDesc: ( load, a32, d32, V8, transpose, L1STATE_L3MOCS dst_len = 1, src0_len = 1, ss )  surface_state_index 0  { align1 WE_all 1N $12 };
send(1)         g81UD           g121UD          nullUD          0x0210c580                0x00000000
                            ugm MsgDesc: ( load, a64, d32, V8, transpose, L1STATE_L3MOCS dst_len = 1, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 WE_all 1N $0 };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N $6.dst };
mad(8)          g40<1>F         g40<8,8,1>F     g100<8,8,1>F    g104<1,1,1>F { align1 1Q };
mad(8)          g41<1>F         g41<8,8,1>F     g101<8,8,1>F    g104<1,1,1>F { align1 1Q };
mad(8)          g42<1>F         g96<8,8,1>F     g102<8,8,1>F    g105<1,1,1>F { align1 1Q $12.dst };
mad(16)         g44<1>HF        g44<8,8,1>HF    g103<8,8,1>HF   g105<1,1,1>HF { align1 1H };
mad(8)          g46<1>D         g46<8,8,1>D     g9<8,8,1>D      g9<1,1,1>D { align1 1Q };
send(8)         nullUD          g53UD           g42UD           0x42000504                a0.2<0>UD
                            ugm MsgDesc: ( store, a32, d32, V1, L1STATE_L3MOCS dst_len = 0, src0_len = 1, ss )  surface_state_index 0  { align1 1Q $0 };
add(8)          g1<1>D          g1<1,1,0>D      16D             { align1 1Q compacted };

LABEL156:
while(8)        JIP:  LABEL158                                  { align1 1Q };
send(8)         nullUD          g2UD            g40UD           0x04000504                0x00000040
                            ugm MsgDesc: ( store, a32, d32, V4, L1STATE_L3MOCS dst_len = 0, src0_len = 1, src1_len = 4 bti )  BTI 1  base_offset 0  { align1 1Q $4 };
