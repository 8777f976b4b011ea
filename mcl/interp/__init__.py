"""mcl.interp"""
