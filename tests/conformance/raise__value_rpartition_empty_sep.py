'abc'.rpartition('')
