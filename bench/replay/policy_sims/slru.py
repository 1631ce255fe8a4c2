import json, sys
from collections import OrderedDict
reqs=[json.loads(l) for l in open('/work/shared/traces/conversation_trace.jsonl')]
refs=[]
for r in reqs:
    h=r['hash_ids']; partial=r['input_length']%512!=0
    for j,b in enumerate(h): refs.append((b, partial and j==len(h)-1))
N=len(refs); C=int(0.1*len(set(b for b,_ in refs)))
def slru(prot_frac, skip_last):
    P=int(C*prot_frac); prob=OrderedDict(); prot=OrderedDict(); hits=0
    for b,last in refs:
        if b in prot: hits+=1; prot.move_to_end(b); continue
        if b in prob:
            hits+=1; del prob[b]; prot[b]=1
            if len(prot)>P:
                v,_=prot.popitem(last=False); prob[v]=1  # demote to probation MRU
            continue
        if skip_last and last: continue
        prob[b]=1
        if len(prob)+len(prot)>C: prob.popitem(last=False)
    return hits
for f in [0.2,0.5,0.8,0.9,0.95]:
    print(f, round(slru(f,False)/N,4), round(slru(f,True)/N,4))
