"""A second hook beside memhealth's, for the end-to-end tests: it saves the exact stdin the
real CLI sent, one file per invocation, and prints nothing (so it never changes what reaches
the model).

    python -I capture_hook.py DIR        # DIR/<time_ns>-<pid>.json, the raw payload bytes

Standard library only, always exits 0: it runs inside the CLI like any hook.
"""

import os
import sys
import time


def main() -> None:
    try:
        data = sys.stdin.buffer.read()
        out = sys.argv[1]
        name = os.path.join(out, f"{time.time_ns():020d}-{os.getpid()}.json")
        with open(name + ".tmp", "wb") as fh:
            fh.write(data)
        os.replace(name + ".tmp", name)  # a reader never sees half a payload
    except Exception as exc:  # a capture failure shows in the test, not as a hook error
        sys.stderr.write(f"capture_hook: {exc}\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
