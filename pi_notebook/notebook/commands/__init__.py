"""The ``%pi`` subcommands: ``conversation`` (model, thinking, status, history, reset, tools,
steer, help, and the table ``run_command`` dispatches through), ``mcp`` (``%pi mcp``) and
``sessions`` (``%pi sessions``, ``resume``, ``compact``, ``branch`` ...). ``magics`` loads
``conversation`` with the first ``%pi`` line."""
