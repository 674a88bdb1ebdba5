"""The console's one stylesheet, inline and allowed by its hash in the CSP (no other style,
no script)."""

STYLE = """
:root{color-scheme:light dark;--fg:CanvasText;--bg:Canvas;--muted:#5f6368;--line:#8884;
--red:#c62828;--green:#2e7d32;--note:#a15c00;--link:LinkText}
@media (prefers-color-scheme:dark){:root{--muted:#a8adb3;--red:#ff8a80;--green:#81c784;--note:#ffb74d}}
caption{text-align:left;padding:.2rem 0}
body{margin:0;font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
header{border-bottom:1px solid var(--line);padding:.5rem 1rem;display:flex;gap:1.5rem;align-items:baseline;flex-wrap:wrap}
header strong{font-size:1.1rem}
nav ul{list-style:none;margin:0;padding:0;display:flex;gap:1rem;flex-wrap:wrap}
nav a{padding:.2rem .4rem;border-radius:.25rem}
nav a[aria-current=page]{font-weight:700;outline:2px solid var(--line)}
main{padding:0 1rem 2rem;max-width:80rem}
a{color:var(--link)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:3px solid #1e88e5;outline-offset:2px}
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}
th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:13px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.25rem 0}
.muted{color:var(--muted)}
.red{color:var(--red);font-weight:700}.green{color:var(--green);font-weight:700}.note{color:var(--note);font-weight:700}
.verdict{font-size:1.3rem;margin:.75rem 0}
.card{border:1px solid var(--line);border-radius:.4rem;padding:.6rem .8rem;margin:.75rem 0}
.card h3{margin:.1rem 0 .4rem;font-size:1rem}
form.inline{display:inline-flex;gap:.4rem;align-items:center;margin:.2rem .6rem .2rem 0;flex-wrap:wrap}
form.filters{display:flex;gap:.8rem;align-items:end;flex-wrap:wrap;margin:.5rem 0}
form.filters label{display:flex;flex-direction:column;font-size:.85rem}
input,select,button{font:inherit;padding:.2rem .4rem}
button{cursor:pointer}
.flash{border-left:4px solid var(--green);padding:.4rem .7rem;margin:.75rem 0}
.flash.error{border-color:var(--red)}
.context{border-left:3px solid var(--line);padding-left:.6rem;margin:.3rem 0}
.context .here{font-weight:700}
.pager{display:flex;gap:1rem;margin:.5rem 0}
td ul{margin:0;padding-left:1rem}
"""
