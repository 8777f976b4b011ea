import sys

from mcl.cli import main

sys.exit(main())
