import sys

from memhealth.cli import main

sys.exit(main())
