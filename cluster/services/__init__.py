"""The processes rayweave runs beside itself: the embedded Ray head, the embedded graph server,
idle shutdown, status and telemetry."""
