"""`memhealth demo`: the quick start's main job."""

from __future__ import annotations

from memhealth.cliutil import add_parser


def register(sub):
    p = add_parser(
        sub, "demo", help="create a sample project and drive a session through the real hooks",
        description="Create a sample project from files memhealth ships, ingest it, drive a "
                    "realistic session through the real hook entry points (startup, prompts with "
                    "and without intent, a machine turn, tool use, compaction, session end), then "
                    "print the verdict line, the injection decisions and a metrics excerpt.")
    p.add_argument("--dir", metavar="DIR", default=None,
                   help="where to create the sample project (default: a new temp directory)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.demo import run_demo

    return run_demo(args.dir)
