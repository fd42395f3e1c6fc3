['HeLLo'.lower(), 'HeLLo'.upper(), 'ÀÉÎ'.lower(), 'straße'.upper(), ''.upper(), '123abc'.upper(), 'İ'.lower()]
