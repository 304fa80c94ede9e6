"""The processes rayweave runs beside itself: the embedded Ray head, the embedded graph server,
idle shutdown and telemetry (`cluster/stack_status.py` reports on them and on the vector actors)."""
