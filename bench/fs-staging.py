#!/usr/bin/env python3
# The file pattern of the agent exam's run files, without gauntlet: 32 passes x 216 files
# of 2.1 KB, four rounds, each round timed. `fresh`: made in new staging directories and
# moved in as directories (the staged writer since e8f68fd); `inplace`: `.tmp` plus a
# rename over the old file in the directory that exists (1d96a95). See BENCHMARKS.md,
# "report.json streamed". Usage: bench/fs-staging.py DIR fresh|inplace
import os,shutil,time,sys
root=sys.argv[1]; mode=sys.argv[2]
data=b'x'*2100
os.makedirs(root,exist_ok=True)
for rep in range(4):
    t=time.time()
    if mode=='fresh':
        st=os.path.join(root,'.staging')
        for p in range(32):
            d=os.path.join(st,f'run-{p}'); os.makedirs(d)
            for i in range(216):
                for suf in ('.json','.transcript.json'):
                    f=os.path.join(d,f's{i}{suf}.tmp')
                    with open(f,'wb') as h: h.write(data)
                    os.rename(f,f[:-4])
        for p in range(32):
            to=os.path.join(root,f'run-{p}'); shutil.rmtree(to,ignore_errors=True); os.rename(os.path.join(st,f'run-{p}'),to)
        shutil.rmtree(st)
    else:
        for p in range(32):
            d=os.path.join(root,f'run-{p}'); os.makedirs(d,exist_ok=True)
            for i in range(216):
                for suf in ('.json','.transcript.json'):
                    f=os.path.join(d,f's{i}{suf}')
                    with open(f+'.tmp','wb') as h: h.write(data)
                    os.rename(f+'.tmp',f)
    print(mode, rep, round(time.time()-t,2), 's', flush=True)
