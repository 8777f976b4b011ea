"""Rendering: feedback messages for people (`text`) and for programs (`json_report`), and
which messages a report shows without `-v` (`visibility`)."""
