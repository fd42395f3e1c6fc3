['' in '', 'a' in '', len(''), len('😀'), len('é'), len('e\u0301'), 'b' in 'abc']
