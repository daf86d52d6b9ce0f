"""The built-in filters: each judges one property of a candidate and returns a verdict with its reason.

Every verdict on a candidate comes from a filter registered in :data:`failforge.plugins.filters`; the mechanism
(:class:`failforge.gold.FilterContext`, :func:`failforge.gold.run_filters`) is the gold pipeline's. Built in:
``evaluator_failure``, ``note_leak`` (the change shows through: a note's wording, the guide's prompt, injected text
where the agent did not read it), ``gold_exposure``, ``differs``, ``well_formed``, ``mode_conformance`` (rules, or
a recorded judge) and ``decisiveness`` (the original arm succeeds, the changed one fails). An environment may
register its own (AgentDojo: ``twin_security``, ``security``, ``chains``, ...), and a third party through the
``failforge.filters`` entry point.
"""
