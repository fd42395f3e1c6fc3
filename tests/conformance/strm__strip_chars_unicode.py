['éaé'.strip('é'), '--x--'.lstrip('-'), '  x\u3000'.rstrip(), 'abcba'.rstrip('ab'), 'xyz'.lstrip('zyx'), '😀a😀'.strip('😀')]
