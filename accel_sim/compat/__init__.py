"""Emulators of other tools' accounting, kept apart from the physical engines they are built on.

`scalesim`: SCALE-Sim 3.0.0's reports, number for number, as the systolic engine's fold model plus SCALE-Sim's
named quirks. Engines never import from here; this package imports the engines.
"""
