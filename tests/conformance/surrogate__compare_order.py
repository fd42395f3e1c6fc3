a = '\ud800'
b = '\udfff'
[a < b, a < '\ue000', a > '\ud7ff', a < '\U00010000', 'z' < a, '\uffff' > b, a <= a, b >= a, ('x' + a) < ('x' + '\uf000'), max(a, '\uf8ff'), min('\U0010f7ff', b)]
