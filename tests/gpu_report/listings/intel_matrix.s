mov(8)          g125<1>UD       0x00000000UD                    { align1 1Q };

LABEL98:
cmp.ge.f0.0(8)  null<1>D        g125<8,8,1>D    g3.6<0,1,0>D    { align1 1Q I@2 };
(+f0.0) break(8) JIP:  LABEL96        UIP:  LABEL96             { align1 1Q };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@1 };
(+f0.0.any8h) send(8) nullUD    g117UD          nullUD          0x02000004                0x00000000
                            gateway MsgDesc: (barrier msg)  mlen 1 ex_mlen 0 rlen 0 { align1 WE_all 1Q $7 };
(+f0.0.any8h) sync bar(8)       null<0,1,0>UB                   { align1 WE_all 1Q };
add(8)          g125<1>D        g125<1,1,0>D    16D             { align1 1Q compacted };
cmp.l.f0.0(8)   null<1>D        g125<8,8,1>D    g3.6<0,1,0>D    { align1 1Q I@1 };
(+f0.0) if(8)   JIP:  LABEL97         UIP:  LABEL97             { align1 1Q };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@6 };
send(8)         g121UD          g120UD          nullUD          0x62201500                0x03000000
                            ugm MsgDesc: ( load, a32, d32, V2, L1STATE_L3MOCS dst_len = 2, src0_len = 1, src1_len = 0 bti )  BTI 3  base_offset 0  { align1 1Q $11 };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@1 };
send(8)         g5UD            g124UD          nullUD          0x62201500                0x03000000
                            ugm MsgDesc: ( load, a32, d32, V2, L1STATE_L3MOCS dst_len = 2, src0_len = 1, src1_len = 0 bti )  BTI 3  base_offset 0  { align1 1Q $8 };

LABEL97:
endif(8)        JIP:  LABEL96                                   { align1 1Q };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@7 };
send(8)         g5UD            g66UD           nullUD          0x02100500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V1, L1STATE_L3MOCS dst_len = 1, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 1Q $13 };
send(8)         g13UD           g119UD          nullUD          0x02403500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 1Q $10 };
add(8)          g121<1>D        g112<1,1,0>D    g120<1,1,0>D    { align1 1Q I@1 compacted };
send(8)         g17UD           g121UD          nullUD          0x02403500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 1Q $15 };
sync allwr(1)                   null<0,1,0>UB                   { align1 WE_all 1N };
sync allwr(1)                   null<0,1,0>UB                   { align1 WE_all 1N };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N $10.src };
send(1)         g123UD          g0UD            nullUD          0x0210011f                0x00000000
                            slm MsgDesc: ( fence, a32, threadgroup, none, normal_routing dst_len = 1, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 WE_all 1N $11 };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@7 };
dpas.8x8(8)     g61<1>F         g29<1,1,0>F     g13<1,1,0>HF    g5<1,1,0>HF { align1 WE_all 1Q $12 };
dpas.8x8(8)     g77<1>F         g69<1,1,0>F     g13<1,1,0>HF    g21<1,1,0>HF { align1 WE_all 1Q $13 };
send(8)         g13UD           g124UD          nullUD          0x02403500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 1Q $3 };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N $13.src };
sync nop(1)                     null<0,1,0>UB                   { align1 WE_all 1N I@1 };
send(8)         g17UD           g45UD           nullUD          0x02403500                0x00000000
                            slm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 1Q $14 };
dpas.8x8(8)     g45<1>F         g37<1,1,0>F     g13<1,1,0>HF    g5<1,1,0>HF { align1 WE_all 1Q $15 };
dpas.8x8(8)     g5<1>F          g53<1,1,0>F     g13<1,1,0>HF    g21<1,1,0>HF { align1 WE_all 1Q $1 };
send(1)         g98UD           g0UD            nullUD          0x0210011f                0x00000000
                            slm MsgDesc: ( fence, a32, threadgroup, none, normal_routing dst_len = 1, src0_len = 1, src1_len = 0 flat )  base_offset 0  { align1 WE_all 1N $0 };

LABEL96:
while(8)        JIP:  LABEL98                                   { align1 1Q };
