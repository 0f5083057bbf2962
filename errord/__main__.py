import sys

from errord.cli.main import main

sys.exit(main())
