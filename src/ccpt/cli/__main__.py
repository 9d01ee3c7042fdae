import sys

from ccpt.cli import main

sys.exit(main())
