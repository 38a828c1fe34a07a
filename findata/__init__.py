"""What every part of findata shares: settings, the clock, the command line."""
