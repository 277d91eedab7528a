import sqlite3,subprocess,sys,tempfile,os,collections
evo,land,opts=sys.argv[1],sys.argv[2],sys.argv[3]; seeds=int(sys.argv[4]); budget=int(sys.argv[5])
tot=collections.Counter(); late=collections.Counter()
for s in range(seeds):
    with tempfile.TemporaryDirectory() as d:
        db=d+'/e.db'; cmd=[evo,'--db',db,'run','--replay',land,'--budget',str(budget),'--seed',str(s),'--strategy','evo','-q','--no-sanitize']
        for o in filter(None,opts.split(':')): cmd+=['-o',o]
        subprocess.run(cmd,check=True,capture_output=True)
        con=sqlite3.connect(db)
        rows=con.execute("SELECT origin_kind, origin_rule FROM evaluations WHERE reused=0 ORDER BY id").fetchall()
        for i,(k,r) in enumerate(rows):
            key=k+':'+(r or '')
            if i>=7: tot[key]+=1
print(land.split('/')[-1], opts, dict(tot.most_common()))
