import sys

from groupcoord.server.cli import main

sys.exit(main())
