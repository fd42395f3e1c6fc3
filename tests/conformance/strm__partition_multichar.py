['key::value::x'.partition('::'), 'key::value::x'.rpartition('::'), 'aaa'.partition('aa'), 'aaa'.rpartition('aa'), 'é=ü'.partition('=')]
