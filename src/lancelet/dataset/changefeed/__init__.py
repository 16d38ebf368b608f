"""What changed between versions: pylance's ``delta()`` (rows inserted and updated
after a version, row ids deleted) and lancelet's change feed (every commit's
inserts, updates with their pre-images, and deletes, as Delta's change data feed
shows them), both read from row lineage, row ids and deletion files."""
