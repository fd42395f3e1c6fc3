[str('a'), str(['a']), repr(['a']), str("'"), repr("'"), repr('"\'')]
