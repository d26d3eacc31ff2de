"""``python -m sketchbo``: the same Hydra app as the ``sketchbo-run`` console script."""
from sketchbo.cli.app import main

if __name__ == "__main__":
    main()
