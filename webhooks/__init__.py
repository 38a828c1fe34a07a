"""Change events, Standard-Webhooks signing and delivery. Built in issue 7."""
