"""Writing Lance 2.1 and 2.2 files.

The pipeline, one module per step:

* :mod:`.shred` splits each batch into leaf columns and their repetition /
  definition levels (structs and lists own no column);
* :mod:`.writer` buffers each leaf column and cuts it into pages;
* :mod:`.page` picks a page's layout (constant, dictionary, mini-block, full-zip)
  and compression as pylance 14 does, from the values (:mod:`.blocks`), the
  field metadata (:mod:`.params`) and the format version;
* :mod:`.miniblock`, :mod:`.levels`, :mod:`.bitpack`, :mod:`.chunks` build
  mini-block pages, :mod:`.fullzip` full-zip ones, :mod:`.dictionary` page
  dictionaries, :mod:`.encodings` the protobuf descriptions.

Everything works on whole pages with numpy; the codecs shared with the reader
(run-length, byte stream split, packed structs, zipping, FSST) live in
:mod:`lancelet.file.codecs`.
"""
