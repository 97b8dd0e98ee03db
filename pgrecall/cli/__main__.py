import sys

from pgrecall.cli import main

sys.exit(main())
