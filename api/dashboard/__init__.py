"""The web dashboard at ``/dashboard``: accounts for people, keys, usage, plans and invitation
trials, webhook endpoints. Server-rendered pages (Jinja2), forms with CSRF tokens, sessions in
signed cookies; nothing is loaded from another host."""
