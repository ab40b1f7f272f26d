"""One ``%%pi`` cell's run: ``plan`` (the cell planned as a value before anything runs),
``runner`` (the plan executed through the conversation's ``AgentSession``, the output frozen,
``_pi`` set), ``approval`` (the gate for state-changing tools and the run mode, headless or
interactive), ``requests`` (the run's ``AgentRunOptions``: tools, gate, temperature, timeout,
seed; a local server's window) and ``errors`` (what a failed run tells the user)."""
