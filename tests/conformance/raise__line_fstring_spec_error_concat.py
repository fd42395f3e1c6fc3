# A format error in an implicitly concatenated f-string is reported at the
# first line of the whole string.
width = 3
label = ("name: "
         f"{width:d}"
         f"{width!r:x}")
