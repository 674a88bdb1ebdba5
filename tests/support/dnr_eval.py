"""DO-NOT-REBUILD on real text: build a store with `memhealth ingest` from a project of the
real-corpus fixture, run the prompt cascade over its labeled prompts, score the verdicts.

    root = build_project("httpx", tmp_dir)          # init + ingest, as a user runs them
    results = evaluate(root, prompts_for("httpx"))  # one verdict per labeled prompt
    summary(results)   # {"precision": 1.0, "recall": 0.87, "false_dnr_rate": 0.0, ...}

Sets: 1 and 2 are the 152 prompts the rules are held to (`prompts_for` default); 3 is a
later held-out set over requests and starlette, written before the rules ran on it, asked
for with `sets=(3,)`; 4 (tests/fixtures/realcorpus/prompts-meaning.jsonl) holds near misses
and re-proposals in other words, for the agreement-in-meaning gate; 5
(tests/fixtures/realcorpus/prompts-heldout5.jsonl) is a second such set over all three
projects, frozen before the gate was next tuned, asked for with `sets=(5,)`; 6
(tests/fixtures/realcorpus/prompts-heldout6.jsonl) a third, frozen before the second tuning
round, asked for with `sets=(6,)`; 7 (tests/fixtures/realcorpus/prompts-heldout7.jsonl) a
fourth, frozen before the third tuning round, asked for with `sets=(7,)`; 8
(tests/fixtures/realcorpus/prompts-heldout8.jsonl) a fifth, frozen before the fourth tuning
round, asked for with `sets=(8,)`; 9 (tests/fixtures/realcorpus/prompts-heldout9.jsonl) a
sixth, frozen before the fifth tuning round, asked for with `sets=(9,)`; 10
(tests/fixtures/realcorpus/prompts-heldout10.jsonl) a seventh, frozen before the sixth tuning
round, asked for with `sets=(10,)`; 11 (tests/fixtures/realcorpus/prompts-heldout11.jsonl)
another, frozen before the seventh tuning round, asked for with `sets=(11,)`; 12 and 13
(tests/fixtures/realcorpus/prompts-heldout12.jsonl, -13) two more, frozen before the eighth
tuning round's measurement (12 in long prompts as typed in a long session, 13 terse and
irregular), asked for with `sets=(12,)` and `sets=(13,)`; 14 and 15
(tests/fixtures/realcorpus/prompts-heldout14.jsonl, -15) two more, frozen before the ninth
tuning round's measurement (14 in long prompts again; 15 in mixed lengths: several asks in one
prompt, quoted messages, review nits, commit messages, chat messages, mostly-code prompts,
forks and vendored copies, re-proposals inside a longer plan), asked for with `sets=(14,)`
and `sets=(15,)`; 16 and 17 (tests/fixtures/realcorpus/prompts-heldout16.jsonl, -17) two
more, frozen before the tenth tuning round's measurement (16 terse and irregular, a third in
full sentences; 17 a week of prompts in one repo: half short, half long, bug reports, reviews,
docs upkeep, CI and ops work, ports, questions, and re-proposals after a question or a pasted
traceback), asked for with `sets=(16,)` and `sets=(17,)`; 18
(tests/fixtures/realcorpus/prompts-heldout18.jsonl) one more, frozen before the eleventh tuning
round's measurement (a team's feature-release week: prompts pointing back at earlier turns,
quoted snippets and config, branches, PR numbers and tickets, re-proposals plain and inside a
release checklist or triage notes), asked for with `sets=(18,)`; 19
(prompts-heldout19.jsonl) written as people who use the projects rather than wrote them (an
application developer, a product manager, an SRE, a student, a data scientist, naming
components by what they do), asked for with `sets=(19,)`; 20 (prompts-heldout20.jsonl) a month
of prompts in mixed lengths (conditionals, negations, comparisons with other libraries,
numbered plans, prompts quoting the inventory or the docs, the project named by its package
name), asked for with `sets=(20,)`; 18, 19 and 20 were frozen together; 21
(prompts-heldout21.jsonl) one more, frozen before the twelfth tuning round's measurement (a
maintainers' week in one repo: issue and PR triage, quoted users, release planning and upkeep,
half short, half long; re-proposals plain, buried in context or by identifiers only), asked
for with `sets=(21,)`; 22 (prompts-heldout22.jsonl) prompts heavy with pasted tracebacks,
diffs, logs, CI output and config before or after a short ask, and 23 (prompts-heldout23.jsonl)
turns inside a long session (replies, corrections, follow-ups by identifiers, bullet plans),
asked for with `sets=(22,)` and `sets=(23,)`; 21, 22 and 23 were frozen together; 24
(prompts-heldout24.jsonl) one more, frozen before the thirteenth tuning round's measurement
(prompts heavy with pasted material from other situations: resolver errors, docker and CI logs,
mypy and coverage output, profiles, bisects, HAR and strace, infra and other systems' config,
the ask before or after the paste), asked for with `sets=(24,)`; 25 (prompts-heldout25.jsonl) a
new team's week of prompts and 26 (prompts-heldout26.jsonl) every earlier style in equal parts,
asked for with `sets=(25,)` and `sets=(26,)`; 24, 25 and 26 were frozen together; 27
(prompts-heldout27.jsonl) one more, frozen before the fourteenth tuning round's measurement (a
new team's week in one repo: on-call bug reports with pasted errors, reviews, docs upkeep, CI
and infra, questions, ports, plans, TODOs and commit messages that re-propose), asked for with
`sets=(27,)`; 28 (prompts-heldout28.jsonl) every earlier style in equal parts again, and 29
(prompts-heldout29.jsonl) contributors new to the project and the maintainers answering them,
asked for with `sets=(28,)` and `sets=(29,)`; 27, 28 and 29 were frozen together; 30
(prompts-heldout30.jsonl) one more, frozen before the fifteenth tuning round's measurement (yet
another team's week in one repo: bug reports, reviews, docs upkeep, ops and CI work, questions,
refactors, ports, plans, pasted errors, re-proposals plain and buried in context), asked for
with `sets=(30,)`; 31 (prompts-heldout31.jsonl) every earlier style in equal parts, and 32
(prompts-heldout32.jsonl) people integrating the library into other systems beside the
maintainers' own work, asked for with `sets=(31,)` and `sets=(32,)`; 30, 31 and 32 were frozen
together; 33 (prompts-heldout33.jsonl) a platform team's quarter in one repo, written as
long, careful prompts (migration plans, incident follow-ups, design reviews, vendor
integrations, onboarding questions, re-proposals stated as plans, ADRs, tickets or buried in
a paragraph), 34 (prompts-heldout34.jsonl) every style in equal parts once more (one-liners,
paragraphs, questions, pastes, review comments, commit messages, hypotheticals, several asks
in one prompt), and 35 (prompts-heldout35.jsonl) a solo maintainer and outside contributors
over a month (triage, reviews, downstream requests, packaging, ports, teaching material,
newcomers re-proposing what exists), asked for with `sets=(33,)`, `sets=(34,)` and
`sets=(35,)`; 33, 34 and 35 were frozen together, before the sixteenth tuning round's
measurement; 36 (prompts-heldout36.jsonl) a ground-station operator's platform team written as
long, careful prompts once more (migration plans, incident follow-ups, design reviews, vendor
SDKs, onboarding questions, RFC excerpts, re-proposals stated as plans, tickets or buried in a
paragraph), 37 (prompts-heldout37.jsonl) every style in equal parts, written fast
(one-liners, paragraphs, questions, pastes, review comments, commit messages, hypotheticals,
several asks in one prompt, chat-like follow-ups), and 38 (prompts-heldout38.jsonl) people who
use the library inside other products (mobile backends, data pipelines, CLIs, games,
embedded devices, notebooks, other frameworks) beside the maintainers' own week, asked for
with `sets=(36,)`, `sets=(37,)` and `sets=(38,)`; 36, 37 and 38 were frozen together, before
the seventeenth tuning round's measurement; 39 (prompts-heldout39.jsonl) an audiobook
publisher's product team written as long, careful prompts (design docs, RFC excerpts,
migration plans, postmortem action items, roadmap notes, onboarding questions, re-proposals
stated as plans, tickets or action items or buried in a paragraph), 40
(prompts-heldout40.jsonl) every style in equal parts once more, around a beekeeping co-op's
tools (one-liners, paragraphs, questions, pastes, review comments, commit messages,
hypotheticals, several asks in one prompt, follow-ups pointing back at earlier turns), and 41
(prompts-heldout41.jsonl) a mixed month (maintainers' releases and reviews, integrators who
embed the library in other products, newcomers who re-propose what exists in plain or
roundabout words), asked for with `sets=(39,)`, `sets=(40,)` and `sets=(41,)`; 39, 40 and 41
were frozen together, before the eighteenth tuning round's measurement; 42
(prompts-heldout42.jsonl) a glacier observatory's platform team that owns the repository and a
few services around it, written as long, careful prompts (design docs, RFC excerpts,
postmortem action items, roadmap notes, onboarding questions, re-proposals stated as plans
giving the team's own service as the reason), 43 (prompts-heldout43.jsonl) every style in
equal parts, written fast, around an amateur observatory's tools, and 44
(prompts-heldout44.jsonl) another mixed month (maintainers' releases and reviews, integrators
embedding the library, newcomers re-proposing what exists), asked for with `sets=(42,)`,
`sets=(43,)` and `sets=(44,)`; 42, 43 and 44 were frozen together, before the nineteenth tuning
round's measurement; 45 (prompts-heldout45.jsonl) a harbour operator's platform team that owns
the repository and services around it, written fast as long, careful prompts (design docs, RFC
excerpts, postmortem action items, quarterly plans, onboarding questions, re-proposals stated as
plans or action items), 46 (prompts-heldout46.jsonl) every style in equal parts, written
fast, around a violin-making workshop's tools, and 47 (prompts-heldout47.jsonl) a mixed month
again (maintainers' releases and reviews, integrators embedding the library, educators and
students, newcomers re-proposing what exists), asked for with `sets=(45,)`, `sets=(46,)` and
`sets=(47,)`; 45, 46 and 47 were frozen together, before the twentieth tuning round's
measurement; 48 (prompts-heldout48.jsonl) a freight-rail operator's platform team that owns
the repository and services around it, written fast as long, careful prompts (design docs,
RFC excerpts, postmortem action items, quarterly plans, onboarding questions, re-proposals
stated as plans or action items), 49 (prompts-heldout49.jsonl) every style in equal parts,
written fast, around a beekeeping cooperative's tools, and 50 (prompts-heldout50.jsonl)
another mixed month (maintainers' releases and reviews, integrators embedding the library,
educators and students, security reviewers, newcomers re-proposing what exists), asked for
with `sets=(48,)`, `sets=(49,)` and `sets=(50,)`; 48, 49 and 50 were frozen together, before
the twenty-first tuning round's measurement; 51 (prompts-heldout51.jsonl) long prompts from a
team owning the repository (design docs, RFC excerpts, postmortem action items, quarterly
plans), 52 (prompts-heldout52.jsonl) every style in equal parts, and 53
(prompts-heldout53.jsonl) a mixed month (maintainers, integrators, educators and students,
security and compliance reviewers, newcomers re-proposing what exists), asked for with
`sets=(51,)`, `sets=(52,)` and `sets=(53,)`; 51, 52 and 53 were frozen together, before the
twenty-second tuning round's measurement; 54 (prompts-heldout54.jsonl) an on-call month (SREs
and incident responders, postmortem action items, hotfix threads, pager notes), 55
(prompts-heldout55.jsonl) a platform team's migration quarter (monorepo moves, internal
wrappers and shims, vendoring and forks, deprecation plans), 56 (prompts-heldout56.jsonl)
open-source contributors and issue triage (issue titles and PR descriptions quoted, code and
paths inline), 57 (prompts-heldout57.jsonl) hurried and non-native English (lowercase, dropped
articles, run-on sentences, pls, w/, impl, tbh), 58 (prompts-heldout58.jsonl) data and ML
people (notebooks, pipelines and feature stores, researchers scraping APIs) and 59
(prompts-heldout59.jsonl) pair programming with an assistant (context first and the ask last,
references to earlier turns, follow-ups), asked for with `sets=(54,)` … `sets=(59,)`; 54 to 59
were frozen together after the twenty-second round, before it was measured again and before
the twenty-third round; 60 (prompts-heldout60.jsonl) a security and compliance quarter
(penetration testers, SOC 2 and ISO auditors, threat models, CVE triage), 61
(prompts-heldout61.jsonl) teaching and learning (instructors, students' homework, tutorial
authors, workshops), 62 (prompts-heldout62.jsonl) a startup's product sprint (loose feature
requests, roundabout words and half-remembered names for what exists), 63
(prompts-heldout63.jsonl) unusual runtimes and neighbours (mobile, serverless, WASM and
Pyodide, game servers, editor plugins, ports, embedded boards), 64 (prompts-heldout64.jsonl)
code review threads (quoted diffs, 'nit:' and 'suggestion:', renames, refactors, follow-ups)
and 65 (prompts-heldout65.jsonl) every style in equal parts, each prompt naming an identifier,
asked for with `sets=(60,)` … `sets=(65,)`; 60 to 65 were frozen together, before the
twenty-third round's measurement; 66 (prompts-heldout66.jsonl) a health-tech integration team
(HL7 and FHIR gateways, hospital networks, vendors' devices), 67 (prompts-heldout67.jsonl) a
game studio's tools team and its modders (build pipelines, asset servers, launchers, mod
loaders), 68 (prompts-heldout68.jsonl) a university research group (HPC schedulers, lab
instruments, theses, shared notebooks), 69 (prompts-heldout69.jsonl) a web agency building
clients' sites (a client's project or a contractor's repo beside the library's code), 70
(prompts-heldout70.jsonl) a long agent session (terse follow-ups pointing back at earlier
turns, a few long restatements of a plan) and 71 (prompts-heldout71.jsonl) every style in
equal parts, half the near misses questions with a build verb and half the re-proposals said
as questions or indirect proposals, asked for with `sets=(66,)` … `sets=(71,)`; 66 to 71 were
frozen together, before the twenty-fourth round's measurement; 72 (prompts-heldout72.jsonl) an
observability vendor's team embedding the library in its agent, 73 (prompts-heldout73.jsonl) a
fintech payments platform (PCI scope, partners' SDKs, reconciliation; re-proposals also as user
stories and change tickets), 74 (prompts-heldout74.jsonl) maintainers of libraries that depend
on the project (wrappers, plugins, stubs, shims), 75 (prompts-heldout75.jsonl) a solo
developer's side projects (home automation, hobby apps, a Discord bot), 76
(prompts-heldout76.jsonl) a consultancy auditing clients' code (reports, findings,
remediation plans) and 77 (prompts-heldout77.jsonl) every style in equal parts, half the
prompts with two or more sentences of context before the ask, asked for with `sets=(72,)` …
`sets=(77,)`; 72 to 77 were frozen together, before the twenty-fifth round's measurement.
Labels
(tests/fixtures/realcorpus/prompts.jsonl): `reproposal` must get a DO-NOT-REBUILD naming
`expect`; `new`, `chitchat` and `system_turn` deserve silence. A DO-NOT-REBUILD is
correct only when it names the expected subsystem: one naming anything else is a false one,
whatever the prompt's label. Used by tests/memory_core/delivery/test_inject_realcorpus.py and
benchmarks/bench_dnr.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from memhealth.config import load
from memhealth.installer import launcher_argv
from memory_core.delivery import inject
from memory_core.delivery.intent import classify, system_turn
from memory_core.index.embed import forget_process_state
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect
from memory_core.text import clean

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "realcorpus")
PROJECTS = ("httpx", "requests", "starlette")
TUNING = ("httpx",)          # thresholds were chosen looking at this project only
HELD_OUT = ("requests", "starlette")
SILENT_LABELS = ("new", "chitchat", "system_turn")
# prompts-meaning.jsonl holds set 4: near misses (label new, kind near_miss) and re-proposals
# in other words, frozen before the agreement-in-meaning gate ran on them; prompts-heldout5.jsonl
# holds set 5, the same kinds, frozen before the gate's next tuning; prompts-heldout6.jsonl
# holds set 6, the same kinds again, frozen before the second tuning round; prompts-heldout7.jsonl
# holds set 7, the same kinds once more, frozen before the third tuning round;
# prompts-heldout8.jsonl holds set 8, the same kinds, frozen before the fourth tuning round;
# prompts-heldout9.jsonl holds set 9, the same kinds, frozen before the fifth tuning round;
# prompts-heldout10.jsonl and -11 hold sets 10 and 11, frozen before the sixth and seventh rounds;
# prompts-heldout12.jsonl and -13 hold sets 12 and 13, frozen before the eighth round's
# measurement (12: long prompts as typed in a long session; 13: terse and irregular);
# prompts-heldout14.jsonl and -15 hold sets 14 and 15, frozen before the ninth round's measurement;
# prompts-heldout16.jsonl and -17 hold sets 16 and 17, frozen before the tenth round's measurement;
# prompts-heldout18.jsonl, -19 and -20 hold sets 18, 19 and 20, frozen before the eleventh round's measurement
# prompts-heldout21.jsonl, -22 and -23 hold sets 21, 22 and 23, frozen before the twelfth round's
# measurement
# prompts-heldout24.jsonl, -25 and -26 hold sets 24, 25 and 26, frozen before the thirteenth
# round's measurement
# prompts-heldout27.jsonl, -28 and -29 hold sets 27, 28 and 29, frozen before the fourteenth
# round's measurement
# prompts-heldout30.jsonl, -31 and -32 hold sets 30, 31 and 32, frozen before the fifteenth
# round's measurement
# prompts-heldout33.jsonl, -34 and -35 hold sets 33, 34 and 35, frozen before the sixteenth
# round's measurement
# prompts-heldout36.jsonl, -37 and -38 hold sets 36, 37 and 38, frozen before the
# seventeenth round's measurement
# prompts-heldout39.jsonl, -40 and -41 hold sets 39, 40 and 41, frozen before the
# eighteenth round's measurement
# prompts-heldout42.jsonl, -43 and -44 hold sets 42, 43 and 44, frozen before the
# nineteenth round's measurement
# prompts-heldout45.jsonl, -46 and -47 hold sets 45, 46 and 47, frozen before the
# twentieth round's measurement
# prompts-heldout48.jsonl, -49 and -50 hold sets 48, 49 and 50, frozen before the
# twenty-first round's measurement
# prompts-heldout51.jsonl, -52 and -53 hold sets 51, 52 and 53, frozen before the
# twenty-second round's measurement
# prompts-heldout54.jsonl … -59 hold sets 54 to 59, frozen before the twenty-third round
# prompts-heldout60.jsonl … -65 hold sets 60 to 65, frozen before the twenty-third round's
# measurement
# prompts-heldout66.jsonl … -71 hold sets 66 to 71, frozen before the twenty-fourth round's
# measurement
# prompts-heldout72.jsonl … -77 hold sets 72 to 77, frozen before the twenty-fifth round's
# measurement
PROMPT_FILES = ("prompts.jsonl", "prompts-meaning.jsonl", "prompts-heldout5.jsonl",
                "prompts-heldout6.jsonl", "prompts-heldout7.jsonl", "prompts-heldout8.jsonl",
                "prompts-heldout9.jsonl", "prompts-heldout10.jsonl", "prompts-heldout11.jsonl",
                "prompts-heldout12.jsonl", "prompts-heldout13.jsonl", "prompts-heldout14.jsonl",
                "prompts-heldout15.jsonl", "prompts-heldout16.jsonl", "prompts-heldout17.jsonl",
                "prompts-heldout18.jsonl", "prompts-heldout19.jsonl", "prompts-heldout20.jsonl",
                "prompts-heldout21.jsonl", "prompts-heldout22.jsonl", "prompts-heldout23.jsonl",
                "prompts-heldout24.jsonl", "prompts-heldout25.jsonl", "prompts-heldout26.jsonl",
                "prompts-heldout27.jsonl", "prompts-heldout28.jsonl", "prompts-heldout29.jsonl",
                "prompts-heldout30.jsonl", "prompts-heldout31.jsonl", "prompts-heldout32.jsonl",
                "prompts-heldout33.jsonl", "prompts-heldout34.jsonl", "prompts-heldout35.jsonl",
                "prompts-heldout36.jsonl", "prompts-heldout37.jsonl", "prompts-heldout38.jsonl",
                "prompts-heldout39.jsonl", "prompts-heldout40.jsonl",
                "prompts-heldout41.jsonl", "prompts-heldout42.jsonl",
                "prompts-heldout43.jsonl", "prompts-heldout44.jsonl",
                "prompts-heldout45.jsonl", "prompts-heldout46.jsonl", "prompts-heldout47.jsonl",
                "prompts-heldout48.jsonl", "prompts-heldout49.jsonl", "prompts-heldout50.jsonl",
                "prompts-heldout51.jsonl", "prompts-heldout52.jsonl", "prompts-heldout53.jsonl",
                "prompts-heldout54.jsonl", "prompts-heldout55.jsonl", "prompts-heldout56.jsonl",
                "prompts-heldout57.jsonl", "prompts-heldout58.jsonl", "prompts-heldout59.jsonl",
                "prompts-heldout60.jsonl", "prompts-heldout61.jsonl", "prompts-heldout62.jsonl",
                "prompts-heldout63.jsonl", "prompts-heldout64.jsonl", "prompts-heldout65.jsonl",
                "prompts-heldout66.jsonl", "prompts-heldout67.jsonl", "prompts-heldout68.jsonl",
                "prompts-heldout69.jsonl", "prompts-heldout70.jsonl", "prompts-heldout71.jsonl",
                "prompts-heldout72.jsonl", "prompts-heldout73.jsonl", "prompts-heldout74.jsonl",
                "prompts-heldout75.jsonl", "prompts-heldout76.jsonl", "prompts-heldout77.jsonl")
_DNR = re.compile(r'^DO-NOT-REBUILD\? "([^"]+)"', re.M)


def prompts_for(*projects: str, sets: tuple[int, ...] = (1, 2)) -> list[dict]:
    items = []
    for name in PROMPT_FILES:
        with open(os.path.join(FIXTURE, name), encoding="utf-8") as fh:
            items += [json.loads(line) for line in fh if line.strip()]
    return [p for p in items if (not projects or p["project"] in projects) and p.get("set", 1) in sets]


def build_project(name: str, dest: str, env: dict | None = None, source: str | None = None,
                  embedding_url: str | None = None, backfill: bool = False) -> str:
    """Copy the fixture project (or `source`) to `dest`, `memhealth init` it, point memory at
    `memory/`, `memhealth ingest` it. With `embedding_url`, [embedding] then points at the
    real model's server: the meaning gate embeds an offered item that has no stored vector,
    and `backfill` also runs `memhealth embed` for every chunk (minutes on a loaded box).
    Returns the project root."""
    root = os.path.join(dest, name)
    shutil.copytree(source or os.path.join(FIXTURE, name), root)
    cmd = launcher_argv()
    env = env or {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
    for args in (["init", "--project", root], None, ["ingest", "--project", root, "docs", "memory"]):
        if args is None:
            path = os.path.join(root, ".memhealth", "config.toml")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.replace("[ingest]\n", '[ingest]\nmemory = ["memory"]\n', 1))
            continue
        proc = subprocess.run(cmd + args, capture_output=True, text=True, timeout=300, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"memhealth {args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    if embedding_url:
        # text first, then every chunk's vector: one ingest with a real model can spend its
        # whole budget embedding doc chunks before the inventory is indexed
        from tests.support.model_server import configure_project

        configure_project(root, embedding_url)
    if embedding_url and backfill:
        proc = subprocess.run(cmd + ["embed", "--project", root], capture_output=True, text=True,
                              timeout=900, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"memhealth embed failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return root


def verdict(conn, cfg, prompt: str, session_id: str, root: str | None = None) -> dict:
    """The cascade as the prompt hook runs it: machine turn, intent, then inject.decide, with
    the project root when it is given (as the hook passes it)."""
    text = clean(prompt)
    if system_turn(text):
        return {"outcome": "system_turn", "dnr": [], "text": None}
    intent, _phrase = classify(text)
    if intent is None:
        return {"outcome": "no_intent", "dnr": [], "text": None}
    result = inject.decide(conn, text, intent, cfg, session_id, Trace(), root=root)
    return {"outcome": result.outcome, "intent": intent, "text": result.text,
            "dnr": _DNR.findall(result.text or ""), "detail": result.detail}


def evaluate(root: str, prompts: list[dict], cfg_overrides: dict | None = None,
             sections: dict | None = None, session: str = "eval") -> list[dict]:
    """One verdict per prompt; `cfg_overrides` go into [injection], `sections` into any
    section ({"embedding": {"timeout_s": 10}}). Sessions are `<session>-<id>`: a second run
    over the same store needs another `session`, or the per-session caps stop it."""
    cfg = load(os.path.join(root, ".memhealth"), environ={})
    cfg["injection"].update(cfg_overrides or {})
    for section, values in (sections or {}).items():
        cfg[section].update(values)
    forget_process_state()  # an open circuit from an earlier run is not this run's
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        # a fresh session per prompt: each is judged on its own, the caps still run
        return [{**p, **verdict(conn, cfg, p["prompt"], f"{session}-{p['id']}", root)} for p in prompts]
    finally:
        conn.close()


def named(expect: str, title: str) -> bool:
    return expect.lower() in title.lower()


def summary(results: list[dict]) -> dict:
    """Precision over DO-NOT-REBUILD blocks emitted, recall over re-proposals, and the share
    of silence-deserving prompts that got a (false) DO-NOT-REBUILD or any injection."""
    blocks = correct = hits = 0
    repro = [r for r in results if r["label"] == "reproposal"]
    silent = [r for r in results if r["label"] in SILENT_LABELS]
    for r in results:
        blocks += len(r["dnr"])
        good = [t for t in r["dnr"] if r["label"] == "reproposal" and named(r["expect"], t)]
        correct += len(good)
        hits += bool(good)
    false_dnr = [r for r in silent if r["dnr"]]
    return {"prompts": len(results), "reproposals": len(repro), "silent": len(silent),
            "dnr_blocks": blocks, "false_dnr_blocks": blocks - correct,
            "precision": round(correct / blocks, 3) if blocks else 1.0,
            "recall": round(hits / len(repro), 3) if repro else 1.0,
            "false_dnr_rate": round(len(false_dnr) / len(silent), 3) if silent else 0.0,
            "spoke_on_silent": round(sum(1 for r in silent if r["text"]) / len(silent), 3) if silent else 0.0}
