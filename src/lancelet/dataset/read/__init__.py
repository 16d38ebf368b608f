"""Reading a version: scans (projection, filter, order, limit), take by offset, row id
or address, fragment readers, the scalar indices a filter may use and the Fragment
Reuse Index they are read through, blobs, plans and scan statistics."""
