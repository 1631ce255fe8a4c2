import json, collections, sys, heapq
from collections import OrderedDict, deque
reqs=[json.loads(l) for l in open('/work/shared/traces/conversation_trace.jsonl')]
refs=[]
for r in reqs:
    h=r['hash_ids']; partial = r['input_length']%512!=0
    for j,b in enumerate(h):
        refs.append((b, partial and j==len(h)-1))
N=len(refs)
distinct=len(set(b for b,_ in refs))
C=int(float(sys.argv[1]) if len(sys.argv)>1 else 0.1 * distinct) if False else int((float(sys.argv[1]) if len(sys.argv)>1 else 0.1)*distinct)

def report(name,hits): print(f"{name:40s} {hits/N:.4f}")

def lru(skip_last=False, tail_insert_last=False):
    c=OrderedDict(); hits=0
    for b,last in refs:
        if b in c: hits+=1; c.move_to_end(b); continue
        if skip_last and last: continue
        c[b]=1
        if tail_insert_last and last: c.move_to_end(b, last=False)
        if len(c)>C: c.popitem(last=False)
    return hits

def belady():
    nxt=[0]*N; seen={}
    for i in range(N-1,-1,-1):
        b=refs[i][0]; nxt[i]=seen.get(b, 1<<60); seen[b]=i
    cache={}; heap=[]; hits=0
    for i,(b,_) in enumerate(refs):
        if b in cache:
            hits+=1
        # update next use
        cache_b_next = nxt[i]
        if b not in cache and len(cache)>=C:
            # bypass if farther than all
            while heap and cache.get(heap[0][1])!=-heap[0][0]: heapq.heappop(heap)
            if heap and -heap[0][0] <= cache_b_next: continue
            _,v=heapq.heappop(heap); del cache[v]
        cache[b]=cache_b_next; heapq.heappush(heap,(-cache_b_next,b))
    return hits

def s3fifo(small_frac=0.1, skip_last=False):
    S=max(1,int(C*small_frac)); M=C-S
    small=deque(); main=deque(); freq={}; where={}; ghost=OrderedDict(); hits=0
    def evict_main():
        while True:
            v=main.popleft()
            if freq[v]>0: freq[v]-=1; main.append(v)
            else: del where[v]; del freq[v]; return
    def evict_small():
        while small:
            v=small.popleft()
            if freq[v]>0:
                freq[v]=0  # move to main
                main.append(v); where[v]='m'
                if len(main)>M: evict_main()
            else:
                del where[v]; del freq[v]; ghost[v]=1
                if len(ghost)>M: ghost.popitem(last=False)
                return
    for b,last in refs:
        if b in where:
            hits+=1; freq[b]=min(3,freq[b]+1); continue
        if skip_last and last: continue
        if b in ghost:
            del ghost[b]; main.append(b); where[b]='m'; freq[b]=0
            if len(main)>M: evict_main()
        else:
            small.append(b); where[b]='s'; freq[b]=0
            if len(small)>S: evict_small()
    return hits

def sieve(skip_last=False):
    from collections import OrderedDict
    # list with hand; implement with dict order + visited
    order=[]  # use linked list via dict
    nodes={}; head=None; tail=None; hand=None; vis={}; hits=0
    prev={}; nex={}
    def insert(b):
        nonlocal head,tail
        prev[b]=None; nex[b]=head
        if head is not None: prev[head]=b
        head=b
        if tail is None: tail=b
    def remove(b):
        nonlocal head,tail
        p,n=prev[b],nex[b]
        if p is not None: nex[p]=n
        else: head=n
        if n is not None: prev[n]=p
        else: tail=p
        del prev[b]; del nex[b]
    size=0
    for b,last in refs:
        if b in vis: hits+=1; vis[b]=True; continue
        if skip_last and last: continue
        if size>=C:
            h=hand if hand is not None else tail
            while vis[h]:
                vis[h]=False; h=prev[h] if prev[h] is not None else tail
            hand=prev[h]
            remove(h); del vis[h]; size-=1
        insert(b); vis[b]=False; size+=1
    return hits

def arc():
    # Adaptive Replacement Cache (Megiddo & Modha): T1 seen once, T2 seen again; B1/B2 ghost
    # lists of what each evicted; p, T1's target size, moves toward the list whose ghost hits.
    T1=OrderedDict(); T2=OrderedDict(); B1=OrderedDict(); B2=OrderedDict(); p=0.0; hits=0
    def replace(in_b2):
        if T1 and (len(T1)>p or (in_b2 and len(T1)==p)):
            v,_=T1.popitem(last=False); B1[v]=1
        else:
            v,_=T2.popitem(last=False); B2[v]=1
    for b,_ in refs:
        if b in T1: hits+=1; del T1[b]; T2[b]=1; continue
        if b in T2: hits+=1; T2.move_to_end(b); continue
        if b in B1:
            p=min(C, p+max(1.0, len(B2)/len(B1))); replace(False); del B1[b]; T2[b]=1; continue
        if b in B2:
            p=max(0.0, p-max(1.0, len(B1)/len(B2))); replace(True); del B2[b]; T2[b]=1; continue
        if len(T1)+len(B1)==C:
            if len(T1)<C: B1.popitem(last=False); replace(False)
            else: T1.popitem(last=False)
        elif len(T1)+len(T2)+len(B1)+len(B2)>=C:
            if len(T1)+len(T2)+len(B1)+len(B2)>=2*C: B2.popitem(last=False)
            replace(False)
        T1[b]=1
    return hits

pol=sys.argv[2:] or ['lru','lru_skip','s3','s3_skip','sieve','sieve_skip','belady']
for p in pol:
    if p=='lru': report('lru',lru())
    if p=='lru_skip': report('lru skip partial last',lru(skip_last=True))
    if p=='s3': report('s3fifo',s3fifo())
    if p=='s3_skip': report('s3fifo skip last',s3fifo(skip_last=True))
    if p=='sieve': report('sieve',sieve())
    if p=='sieve_skip': report('sieve skip last',sieve(skip_last=True))
    if p=='belady': report('belady',belady())
    if p=='arc': report('arc',arc())
