"""Transactions: operations as data, the conflict rules, and the commit loop."""
