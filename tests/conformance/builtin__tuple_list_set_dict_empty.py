[tuple(), list(), set(), dict(), str(), int(), float()]
