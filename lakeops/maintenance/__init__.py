"""Keeping a table healthy after its commits: snapshot expiry (``expire``), orphan cleanup
(``orphan``), rollback, ``check`` and ``repair`` of a table's metadata, tags created and deleted
(``tags``) and Paimon's automatic tags (``auto_tags``)."""
