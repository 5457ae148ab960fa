import json, sys
# usage: exports.py <pkgdir> [subpath:srcfile ...] [--lua]
pkg = sys.argv[1]
args = [a for a in sys.argv[2:] if not a.startswith("--")]
lua = "--lua" in sys.argv
p = f"{pkg}/package.json"
d = json.load(open(p))
subs = {".": "index"}
for a in args:
    k, v = a.split(":")
    subs[k] = v
exp, pub = {}, {}
for k, v in subs.items():
    exp[k] = {"@flotilla/source": f"./src/{v}.ts", "types": f"./dist/{v}.d.ts", "default": f"./dist/{v}.js"}
    pub[k] = {"types": f"./dist/{v}.d.ts", "default": f"./dist/{v}.js"}
d["exports"] = exp
d["publishConfig"]["exports"] = pub
d["files"] = [f for f in d["files"] if f != "lua"]
if lua:
    d["scripts"]["lua"] = "node ../../tooling/lua/build.ts ."
    d["scripts"]["build"] = "node ../../tooling/lua/build.ts . && tsc -p tsconfig.build.json"
    d["scripts"]["typecheck"] = "node ../../tooling/lua/build.ts . && tsc -p tsconfig.json"
open(p, "w").write(json.dumps(d, indent=2) + "\n")
