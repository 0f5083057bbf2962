import sys

from errord.cli import main

sys.exit(main())
