"""Alignment after SFT (docs/alignment.md): GNT rewards and on-policy preference optimisation.

- :mod:`gnt.alignment.rewards`: the reward functions (label, the judge's verdict, adequacy) and sample scoring;
- :mod:`gnt.alignment.onpolicy`: rounds of sampling the policy, pairing its best and worst samples, and DPO.
"""
