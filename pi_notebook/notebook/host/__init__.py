"""What depends on the ipykernel version: ``compat`` (finding the kernel, whether comms are
handled while a cell runs, the comm acknowledgement shim) and ``interrupts`` (SIGINT during a
run and the fallback's main-thread bridge)."""
