"""One ``%%pi`` cell's run: ``runner`` (options to result, the cell's lifecycle), ``approval``
(the gate for state-changing tools and the run mode, headless or interactive), ``requests``
(per-run request settings: temperature, timeout, seed, a local server's window), ``retry``
(retrying transient provider errors) and ``errors`` (what a failed run tells the user)."""
