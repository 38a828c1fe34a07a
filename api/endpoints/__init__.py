"""One module per endpoint contract: ``handle(call) -> EndpointAnswer`` (see ``api/calls.py``)."""
