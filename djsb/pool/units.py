"""Time in the pool model is in seconds; configs give hours and days (as paper 002 does)."""

HOUR = 3600.0
DAY = 24 * HOUR
