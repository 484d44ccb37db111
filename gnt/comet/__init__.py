"""xCOMET translation-quality scoring in an isolated environment (unbabel-comet needs transformers < 5).

``scorer`` (main environment) drives ``runner`` (run by path with ``.venv-comet/bin/python``); ``tiny`` builds an
offline XCOMET-architecture checkpoint for tests; ``env`` locates and builds the environment. Nothing is imported
here, so that the comet-side scripts never pull in gnt's dependencies.
"""
