[repr("a'b"), repr('a"b'), repr('a\'b"c'), repr("\\'"), repr('\x00\x1f'), repr('\t\\')]
