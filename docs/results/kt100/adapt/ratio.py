import sqlite3,subprocess,sys,tempfile,statistics
evo=sys.argv[1]; at=int(sys.argv[2]); lands=sys.argv[3:]
for land in lands:
    rs=[];stuck=[]
    for s in range(20):
        with tempfile.TemporaryDirectory() as d:
            db=d+'/e.db'; cmd=[evo,'--db',db,'run','--replay',land,'--budget',str(at),'--seed',str(s),'--strategy','evo','-q','--no-sanitize']
            subprocess.run(cmd,check=True,capture_output=True)
            rows=sqlite3.connect(db).execute("SELECT origin_kind, origin_rule, status, p50_us FROM evaluations WHERE reused=0 ORDER BY id").fetchall()
        uni=[t for k,r,st,t in rows if k=='random' and r not in('stall','near') and st=='measured' and t]
        allt=[t for k,r,st,t in rows if st=='measured' and t]
        rs.append(min(uni)/min(allt) if uni else float('nan'))
    print('%-40s at %d: uniform best / best: median %.3f  quartiles %s'%(land.split('/')[-1],at,statistics.median(rs),[round(x,3) for x in statistics.quantiles(rs,n=4)]))
